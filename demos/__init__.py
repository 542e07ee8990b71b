"""Small, fast demos of what the sparseness knob does (run each as a script)."""
