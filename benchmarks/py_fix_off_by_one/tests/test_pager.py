from pager import page, page_count


def test_first_page():
    assert page(list(range(10)), 1, 3) == [0, 1, 2]


def test_last_page_is_partial():
    assert page(list(range(10)), 4, 3) == [9]


def test_past_the_end_is_empty():
    assert page(list(range(10)), 5, 3) == []


def test_page_count():
    assert [page_count(n, 3) for n in (0, 1, 3, 9, 10)] == [0, 1, 1, 3, 4]
