"""Stage 7 (sourcegrad/compiler/derive/): reverse and forward mode, adjoints, templates and their replay, checkpointing and row blocks."""
