"""Notebooks 11 and 12: the composed assistant and the two front ends that use it, the chat window and the terminal chat."""
