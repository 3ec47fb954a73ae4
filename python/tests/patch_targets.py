"""A module for the patching tests to patch (and check it is left untouched)."""

LIMIT = 3


def scale(x, factor=2):
    return x * factor


class Base:
    def greet(self, name):
        return f"hello {name}"

    @staticmethod
    def twice(x):
        return 2 * x

    @classmethod
    def make(cls, value):
        return (cls.__name__, value)


class Derived(Base):
    pass
