"""Job specs as Nomad reads them (pure): :mod:`.defaults` fills in what a
spec leaves unset, once, when the job is registered."""
