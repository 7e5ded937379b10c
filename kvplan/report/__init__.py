"""The design-review report: configurations in the gate's file format, as Markdown or self-contained HTML.

``build`` turns a loaded file and its results into neutral blocks (headings, paragraphs,
tables, images); ``markdown`` and ``html`` render them; ``write`` draws the plots with
:mod:`kvplan.plots` and writes everything whole.
"""
