"""Temperature conversions."""

ABSOLUTE_ZERO_C = -273.15


def celsius_to_fahrenheit(celsius: float) -> float:
    """Degrees Fahrenheit for ``celsius`` degrees Celsius."""
    return celsius * 9 / 5 + 32
