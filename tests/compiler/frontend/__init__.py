"""The source front end (sourcegrad/compiler/frontend/, stage 1): Python source read into IR, what it refuses (the fence) and what Python means by what it reads."""
