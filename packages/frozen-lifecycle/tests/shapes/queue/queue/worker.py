"""The worker process: its own state, and the jobs it runs."""


class Worker:
    def __init__(self):
        self.status = "idle"

    def run(self, job):
        self.status = "busy"
        try:
            return job.perform()
        finally:
            self.status = "idle"
