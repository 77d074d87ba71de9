"""Stage 9 (sourcegrad/compiler/emit/): generated source as printed (line breaks, goldens, hand-written comparisons, what a call costs)."""
