"""Stages 4-5 (sourcegrad/compiler/specialise/): the IR specialised to a signature (decided branches, lists made arrays, masked writes made selections)."""
