"""Local development helpers: a real etcd on loopback and the process supervisor of `drover dev`."""
