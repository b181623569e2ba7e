"""What the command line drives over a project: its configuration, loading
spec modules, the one pass over each spec (checks, rendering, output plans),
writing files, diagnostic reports, offline compiles and ``show``.
"""
