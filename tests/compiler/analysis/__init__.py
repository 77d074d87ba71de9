"""sourcegrad/compiler/analysis/ (stages 3 and 6): abstract values, activity, names' lifetimes, the shapes printed from the user's values."""
