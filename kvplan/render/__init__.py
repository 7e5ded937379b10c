"""Turning results into text: number formatting, JSON documents, Markdown/CSV and Rich tables."""
