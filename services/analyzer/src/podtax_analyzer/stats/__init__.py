"""Pure statistical building blocks of the comparison: one small module per method.

Every function takes plain numpy arrays, never raises on odd data (it returns warnings), and
documents the unit and range of each field it returns.
"""
