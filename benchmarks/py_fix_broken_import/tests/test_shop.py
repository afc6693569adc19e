from shop import line_total, order_total


def test_line_total():
    assert line_total(250, 3) == 750


def test_order_total():
    assert order_total([(250, 3), (99, 1), (1000, 0)]) == 849
