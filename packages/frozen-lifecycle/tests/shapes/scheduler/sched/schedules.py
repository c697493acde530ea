"""Schedules: each fires a new job in the queue while it is active."""

import logging
from enum import Enum

log = logging.getLogger(__name__)


class ScheduleState(str, Enum):
    ACTIVE = "active"
    PAUSED = "paused"
    FINISHED = "finished"


class Scheduler:
    def fire(self, schedule, queue):
        if schedule.state != ScheduleState.ACTIVE:
            return None
        log.info("schedule %s fires", schedule.id)
        return queue.enqueue_job(schedule.new_job())
