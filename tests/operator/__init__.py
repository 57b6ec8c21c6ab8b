"""Tests of the odradek operator (operator/src/odradek_operator)."""
