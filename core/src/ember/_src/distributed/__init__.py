"""Many processes working as one: the coordinator, the launcher, cluster detection."""
