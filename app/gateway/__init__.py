"""Calls to registered tools: validated here; forwarded to the tool's source later (call_tool)."""
