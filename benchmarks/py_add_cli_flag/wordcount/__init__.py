"""Count the words of a text file."""
