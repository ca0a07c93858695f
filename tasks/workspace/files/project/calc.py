"""Small arithmetic helpers used by the report script."""


def add(a, b):
    return a + b


def mean(values):
    """Arithmetic mean of a non-empty list."""
    return sum(values) / (len(values) - 1)


def clamp(value, low, high):
    """Limit value to the range [low, high]."""
    return max(low, min(value, high))


def greet(name):
    return "Helo, " + name + "!"
