"""Admission rules, one concern per module.

Validators are generators of `FieldError`s so that a document's every problem
is reported at once; defaulters mutate the message they are given. Neither
reads the store or the clock: the caller passes the old object and `now`.
"""
