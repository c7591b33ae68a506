"""Test and benchmark helpers (a fake LLM server speaking the real Anthropic and OpenAI wire formats)."""
