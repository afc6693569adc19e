import pytest

from temperature import celsius_to_fahrenheit


def test_freezing_and_boiling():
    assert celsius_to_fahrenheit(0) == 32
    assert celsius_to_fahrenheit(100) == 212


def test_absolute_zero_is_allowed():
    assert celsius_to_fahrenheit(-273.15) == pytest.approx(-459.67)


def test_below_absolute_zero():
    with pytest.raises(ValueError):
        celsius_to_fahrenheit(-300)


@pytest.mark.parametrize("bad", ["12", None, True])
def test_not_a_number(bad):
    with pytest.raises(TypeError):
        celsius_to_fahrenheit(bad)
