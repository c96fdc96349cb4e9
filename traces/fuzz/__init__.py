"""The differential fuzzer (``xspec fuzz``): command generation, Hypothesis strategies, campaigns."""
