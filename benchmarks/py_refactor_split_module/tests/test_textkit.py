from textkit import char_count, snake_case, title_case, word_count


def test_title_case():
    assert title_case("hello  big-world") == "Hello Big World"


def test_snake_case():
    assert snake_case("Hello Big-World 2") == "hello_big_world_2"


def test_word_count():
    assert word_count(" one two\tthree\n") == 3


def test_char_count():
    assert char_count("a b c") == 3
    assert char_count("a b c", spaces=True) == 5
