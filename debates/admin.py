from __future__ import annotations

from django.contrib import admin

from debates.models import HumanAction, Run, RunEvent, Seat, Turn


class SeatInline(admin.TabularInline):
    model = Seat
    extra = 0


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "protocol", "topic", "status", "backend", "created_at"]
    list_filter = ["protocol", "status", "backend"]
    search_fields = ["topic"]
    inlines = [SeatInline]
    readonly_fields = ["lease_owner", "lease_expires_at", "heartbeat_at", "last_seq"]


@admin.register(Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ["run", "key", "status", "attempt", "backend", "finished_at"]
    list_filter = ["status", "backend"]


@admin.register(RunEvent)
class RunEventAdmin(admin.ModelAdmin):
    list_display = ["run", "seq", "kind", "created_at"]
    list_filter = ["kind"]


@admin.register(HumanAction)
class HumanActionAdmin(admin.ModelAdmin):
    list_display = ["run", "kind", "step_key", "user", "created_at"]
