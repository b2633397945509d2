"""Scripts whose output is committed as code: type-checked, each with a quick test."""
