"""Admission: defaulting and validation; the write door for users."""
