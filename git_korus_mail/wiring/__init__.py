"""Install wiring every client shares: the files install writes outside the mail store
(atomic replace, its record, its lock), the hook stub's executable, git's post-checkout
hook and info/exclude. A client's own wiring (clients/claude/) builds on these."""
