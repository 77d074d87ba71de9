"""The trace front end (sourcegrad/compiler/trace/, stage 1's other producer): functions run on traced values into IR, and traced loops rolled back into loops."""
