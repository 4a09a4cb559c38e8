"""Database backends of PowerContext."""
