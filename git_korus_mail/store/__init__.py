"""Every byte on disk: the mail store. Kept trivial: the hook path imports it."""
