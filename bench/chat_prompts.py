"""The chat questions the throughput and train-step benchmarks send, shared so both measure
the same prompts."""

QUESTIONS = [
    "Explain why the sky is blue.",
    "Write a short poem about the sea.",
    "What is reinforcement learning?",
    "Give me three tips for learning Python.",
    "Describe the water cycle.",
    "Why do cats purr?",
    "What makes a good breakfast?",
    "How does a bicycle stay upright?",
]
