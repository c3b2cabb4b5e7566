"""placeholder: filled in below."""
