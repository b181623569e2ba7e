"""Drawings of layouts, bindings and specs: SVG built from data, PNG by an
external converter. Imports the schema and the declaration language only.
"""
