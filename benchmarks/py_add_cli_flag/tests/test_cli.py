from wordcount.cli import count_words, main


def test_count_words():
    assert count_words("one two\nthree") == 3


def test_main_prints_words(tmp_path, capsys):
    path = tmp_path / "t.txt"
    path.write_text("a b c\nd\n")
    assert main([str(path)]) == 0
    assert capsys.readouterr().out == "words: 4\n"

