"""Multi-process ember: joining a job of several processes and finding its launcher."""
