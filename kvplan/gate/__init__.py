"""The release gate: a file of named configurations and thresholds, checked all at once.

``spec`` loads and validates the file into scenarios, ``checker`` evaluates them (pure),
``result`` holds what it found, ``reporters`` turns results into tables, JSON, JUnit XML
and Markdown. The CLI (``kvplan gate``) is a thin client of these.
"""
