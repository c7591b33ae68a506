"""Import limits for knowledge bases: every bound an import enforces, in one place.

A realistic seed-002 KB is a few hundred markdown files and a few MB (the bundled demo: 47 files, 160 KB; its
largest file 11 KB, its largest frontmatter 750 characters, nesting 2 deep, no YAML anchors); a seed-004 data KB is
a JSON document of a few KB. The limits leave an order of magnitude of headroom above that and stop inputs built to
exhaust memory, disk or CPU (zip bombs, YAML alias bombs, deep nesting, huge numbers) before they are expanded.
Two rules have no number: YAML anchors and aliases are refused outright (no KB uses them, and alias chains expand
exponentially: a 1.6 KB "billion laughs" frontmatter became a 58 MB stored field), and JSON's NaN and Infinity,
which no JSON standard allows, are refused like numbers that overflow to infinity.

Anything over a limit is refused like any other bad input: a `Problem` naming the file, line, field and value, and
nothing imported — on the upload form (/kb/) and in `manage.py import_kb`. Code reads these constants as
`limits.NAME` (module attribute), so tests may lower one to keep their inputs small.
"""

from __future__ import annotations

MiB = 1024 * 1024

# --- uploads and files -----------------------------------------------------------------------------------------

# The largest .zip or .json accepted, by the upload form and by import_kb of a file (checked before reading it).
MAX_UPLOAD_BYTES = 20 * MiB
# Files and directories in one KB (a directory import or a zip archive): a realistic KB has a few hundred.
MAX_FILES = 2000
# The largest single KB file (a markdown node, or one zip entry once decompressed): the demo's largest is 11 KB.
MAX_FILE_BYTES = 2 * MiB

# Characters of one number (JSON or YAML): data are prices, rates and counts; Python refuses ints over 4300 digits.
MAX_NUMBER_CHARS = 100

# --- zip archives (counted on the bytes actually decompressed, never on the sizes the archive declares) ----------

# Entries in one archive (files and directories), counted before anything is decompressed.
ZIP_MAX_ENTRIES = MAX_FILES
# Decompressed bytes of one entry; the same bound as a file in a directory import.
ZIP_MAX_ENTRY_BYTES = MAX_FILE_BYTES
# Decompressed bytes of the whole archive: many times any real KB, small enough to hold on disk briefly.
ZIP_MAX_TOTAL_BYTES = 64 * MiB
# Decompressed / compressed bytes of one entry: markdown deflates about 3-10x; a zip bomb of zeros about 1000x.
ZIP_MAX_COMPRESSION_RATIO = 100
# The ratio is judged once an entry has produced this much: small files of repeated lines compress very well.
ZIP_RATIO_MIN_BYTES = 256 * 1024
# Decompression proceeds in pieces of this size, so no cap is ever overshot by more than one piece.
ZIP_READ_CHUNK_BYTES = 64 * 1024

# --- YAML frontmatter (seed 002) --------------------------------------------------------------------------------

# Characters between the '---' lines: the demo's largest is 750; bounds the YAML parser's work.
FRONTMATTER_MAX_CHARS = 32 * 1024
# Nesting of mappings and lists: frontmatter is flat fields and short lists (2 deep in the demo).
FRONTMATTER_MAX_DEPTH = 8
# Characters of one string value in a field (at any depth): the demo's longest summary is 220.
FRONTMATTER_FIELD_MAX_CHARS = 8 * 1024

# --- JSON data KBs (seed 004) -----------------------------------------------------------------------------------

# Bytes of one JSON document (within MAX_UPLOAD_BYTES): the demo market KB is 8 KB; agents read it whole.
JSON_MAX_BYTES = 10 * MiB
# Nesting of objects and arrays; checked before parsing, so deep input never reaches a recursive parser.
JSON_MAX_DEPTH = 64

# --- slugs ------------------------------------------------------------------------------------------------------

# A KB slug must also be a Django slug (validate_slug: ASCII letters, digits, '-', '_'): it is in every KB URL.
# KnowledgeBase.slug max_length (kb/models.py); a test keeps the two equal.
SLUG_MAX_LENGTH = 100
# An automatic slug (from the title or file name) is cut to this, leaving room for a '-N' suffix.
SLUG_AUTO_MAX_LENGTH = 90
# KnowledgeBase.title max_length: a title taken from the KB's own H1 is cut to it; a given --title is checked.
TITLE_MAX_LENGTH = 300
