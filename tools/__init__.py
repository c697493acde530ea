"""Tools of this repository that are not part of the program: mutation testing, the docs."""
