"""(placeholder, filled in by the next step)"""
