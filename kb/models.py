"""Knowledge bases. Seed-002 argument graphs keep everything their files hold (frontmatter, the ten body sections,
sources with bold fields / Criticism / Content, entities, the 12 edge types, contradictions, quality summary, log);
seed-004 data KBs keep their JSON tree. After import, only kb.discipline changes a KB."""

from __future__ import annotations

from enum import StrEnum

from django.conf import settings
from django.db import models

STATUSES = ["robust", "strong", "contested", "weak", "refuted", "baseless"]
# How well supported each status is: a status only moves down this rank (kb.discipline); the two dead ends tie.
STATUS_RANK = {"robust": 5, "strong": 4, "contested": 3, "weak": 2, "refuted": 1, "baseless": 1}
LAYERS = [
    "empirical",
    "methodological",
    "ethical/metaphysical",
    "cultural/religious",
    "policy/regulatory",
    "meta",
]
BASIS_TYPES = ["empirical", "reasoning", "metaphysical", "mixed"]
LOGICAL_EDGES = [
    "supports",
    "contradicts",
    "refutes",
    "depends-on",
    "refines",
    "exaggerates",
    "confounds",
    "derived-from-source",
]
ENGAGEMENT_EDGES = ["addresses", "tangential-to", "scope-mismatch-with", "layer-shift-from"]
EDGE_TYPES = LOGICAL_EDGES + ENGAGEMENT_EDGES
# A source file's `source_type` (seed 002, the source template).
SOURCE_TYPES = ["peer-reviewed", "media", "institutional", "reference", "fringe", "dissident"]
CONTRADICTION_TYPES = [
    "structural",
    "dangling-evidence",
    "within-position-incoherence",
    "cross-source-disagreement",
    "authority-evidence-drift",
]
# The ten body parts of an argument node, in file order (the H1 carries the statement as its title).
ARGUMENT_SECTIONS = [
    ("statement", "Statement"),
    ("evidentiary_basis", "Evidentiary basis"),
    ("supporting", "Supporting arguments"),
    ("attacking", "Attacking arguments"),
    ("refining", "Refining / derivative arguments"),
    ("depends_on", "Depends on"),
    ("engagement", "Engagement (relevance edges)"),
    ("traceback_notes", "Traceback notes"),
    ("strength_assessment", "Strength assessment"),
]


class KnowledgeBase(models.Model):
    GRAPH, DATA = "graph", "data"
    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=300)
    kind = models.CharField(
        max_length=10, choices=[(GRAPH, "argument graph (seed 002)"), (DATA, "data (seed 004)")]
    )
    quality_summary = models.TextField(blank=True)
    stable_detected = models.BooleanField(default=False)
    stable_statement = models.TextField(
        blank=True, help_text="The line of the quality summary that states stability."
    )
    stable_confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    log = models.TextField(blank=True)
    data = models.JSONField(null=True, blank=True, help_text="The JSON tree of a data KB.")
    imported_from = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title

    @property
    def is_stable(self) -> bool:
        return self.stable_detected or self.stable_confirmed_by_id is not None


class Argument(models.Model):
    kb = models.ForeignKey(KnowledgeBase, related_name="arguments", on_delete=models.CASCADE)
    arg_id = models.CharField(max_length=20)
    slug = models.CharField(max_length=200)
    position = models.CharField(max_length=100)
    layer = models.CharField(max_length=40)
    scope = models.TextField()
    basis_type = models.CharField(max_length=20)
    status = models.CharField(max_length=20)
    asserter = models.TextField()
    summary = models.TextField()
    extra_frontmatter = models.JSONField(default=dict, blank=True)
    title = models.TextField(help_text="The H1 after '# Argument: '.")
    statement = models.TextField()
    evidentiary_basis = models.TextField(blank=True)
    supporting = models.TextField(blank=True)
    attacking = models.TextField(blank=True)
    refining = models.TextField(blank=True)
    depends_on = models.TextField(blank=True)
    engagement = models.TextField(blank=True)
    traceback_notes = models.TextField(blank=True)
    strength_assessment = models.TextField(blank=True)
    extra_sections = models.JSONField(
        default=list, blank=True, help_text="Sections beyond the ten: [[heading, text]]."
    )
    created_during_run = models.ForeignKey(
        "debates.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["arg_id"]
        constraints = [models.UniqueConstraint(fields=["kb", "arg_id"], name="argument_unique_id")]

    def __str__(self) -> str:
        return self.arg_id

    @property
    def filename(self) -> str:
        return f"{self.arg_id}-{self.slug}.md"


class Source(models.Model):
    kb = models.ForeignKey(KnowledgeBase, related_name="sources", on_delete=models.CASCADE)
    path = models.CharField(max_length=500, help_text="kb/sources/<subdir>/<slug>.md")
    frontmatter = models.JSONField(default=dict)
    frontmatter_order = models.JSONField(default=list)
    title = models.TextField()
    fields = models.JSONField(
        default=list, help_text="Bold-labelled fields in file order: [[label, value], ...]."
    )
    body = models.TextField(blank=True, help_text="Everything after the field list (## Content, reads, ...).")

    class Meta:
        ordering = ["path"]
        constraints = [models.UniqueConstraint(fields=["kb", "path"], name="source_unique_path")]

    def __str__(self) -> str:
        return self.path

    @property
    def criticism(self) -> str:
        return next((value for label, value in self.fields if label == "Criticism"), "")


class Entity(models.Model):
    kb = models.ForeignKey(KnowledgeBase, related_name="entities", on_delete=models.CASCADE)
    path = models.CharField(max_length=500)
    frontmatter = models.JSONField(default=dict)
    frontmatter_order = models.JSONField(default=list)
    body = models.TextField(blank=True)

    class Meta:
        ordering = ["path"]
        verbose_name_plural = "entities"
        constraints = [models.UniqueConstraint(fields=["kb", "path"], name="entity_unique_path")]

    def __str__(self) -> str:
        return self.path


class Edge(models.Model):
    kb = models.ForeignKey(KnowledgeBase, related_name="edges", on_delete=models.CASCADE)
    order = models.PositiveIntegerField()
    src = models.CharField(max_length=20)
    type = models.CharField(max_length=30)
    target = models.CharField(max_length=500)
    comment = models.TextField(blank=True)
    created_during_run = models.ForeignKey(
        "debates.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["order"]

    def __str__(self) -> str:
        return f"{self.src} {self.type} {self.target}"

    @property
    def engagement(self) -> bool:
        return self.type in ENGAGEMENT_EDGES


class Contradiction(models.Model):
    kb = models.ForeignKey(KnowledgeBase, related_name="contradictions", on_delete=models.CASCADE)
    c_id = models.CharField(max_length=20)
    title = models.TextField()
    type = models.CharField(max_length=40)
    status = models.CharField(max_length=60)
    fields = models.JSONField(
        default=list, help_text="Bold-labelled bullets in file order: [[label, value], ...]."
    )

    class Meta:
        ordering = ["c_id"]
        constraints = [models.UniqueConstraint(fields=["kb", "c_id"], name="contradiction_unique_id")]

    def __str__(self) -> str:
        return self.c_id

    def field(self, label: str) -> str:
        return next((value for name, value in self.fields if name == label), "")

    @property
    def description(self) -> str:
        return self.field("Description")


class CentralQuestion(models.Model):
    kb = models.ForeignKey(KnowledgeBase, related_name="central_questions", on_delete=models.CASCADE)
    order = models.PositiveIntegerField()
    text = models.TextField()
    arg_ids = models.JSONField(default=list)

    class Meta:
        ordering = ["order"]

    def __str__(self) -> str:
        return self.text


class OriginalFile(models.Model):
    """A file of the folder a KB was imported from, as it was read (its line endings too). Never written again: an
    export writes it back as it is, or with only what a debate changed edited into it (kb/formats/seed002_edit.py).
    A KB made otherwise (a data KB, a KB built in code) has none, and its files are generated."""

    kb = models.ForeignKey(KnowledgeBase, related_name="original_files", on_delete=models.CASCADE)
    path = models.CharField(max_length=500, help_text="kb/... as in the folder imported.")
    text = models.TextField(blank=True)

    class Meta:
        ordering = ["path"]
        constraints = [models.UniqueConstraint(fields=["kb", "path"], name="original_file_unique_path")]

    def __str__(self) -> str:
        return self.path


class Snapshot(models.Model):
    """The KB as it was when a debate started: the exported files, never written again."""

    kb = models.ForeignKey(KnowledgeBase, related_name="snapshots", on_delete=models.CASCADE)
    run = models.OneToOneField(
        "debates.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="snapshot"
    )
    files = models.JSONField(help_text="{relative path: file text} as exported at snapshot time.")
    arguments = models.JSONField(
        help_text="{arg_id: {status, position, layer, ...}} for diffs and citations."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"snapshot of {self.kb_id} at {self.created_at:%Y-%m-%d %H:%M}"


class Revision(models.Model):
    kb = models.ForeignKey(KnowledgeBase, related_name="revisions", on_delete=models.CASCADE)
    r_id = models.CharField(max_length=20)
    heading = models.TextField(help_text="'<date> — <agent>, debate turn N' as in kb/revisions.md.")
    type = models.CharField(max_length=40)
    target = models.CharField(max_length=500)
    change = models.TextField()
    justification = models.TextField()
    triggered_by = models.TextField()
    run = models.ForeignKey("debates.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    turn = models.ForeignKey(
        "debates.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["r_id"]
        constraints = [models.UniqueConstraint(fields=["kb", "r_id"], name="revision_unique_id")]

    def __str__(self) -> str:
        return self.r_id

    @property
    def type_words(self) -> str:
        """The revision's type as pages say it ("lower a rating"); revisions.md keeps the type itself."""
        return mutation_kind_words(self.type)


class MutationStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    APPLIED = "applied"
    REFUSED = "refused"


class MutationKind(StrEnum):
    """The changes a debate may propose to a graph KB (ProposedMutation.kind). The discipline always refuses the
    last two; they are kinds so that the refusal names the rule. A new source always waits for a person's
    approval (kb.discipline.NEEDS_A_PERSON)."""

    STATUS_DOWNGRADE = "status-downgrade"
    NEW_EDGE = "new-edge"
    NEW_NODE = "new-node"
    NEW_SOURCE = "new-source"
    CRITICISM_APPEND = "criticism-append"
    TRACEBACK_APPEND = "traceback-append"
    CONTRADICTION_ADDED = "contradiction-added"
    STATEMENT_REWRITE = "statement-rewrite"
    DELETE = "delete"


# What each kind of change asks, as pages say it (a run's approvals, the KB inbox).
MUTATION_KIND_WORDS: dict[str, str] = {
    MutationKind.STATUS_DOWNGRADE: "lower a rating",
    MutationKind.NEW_EDGE: "add a relation",
    MutationKind.NEW_NODE: "add an argument",
    MutationKind.NEW_SOURCE: "add a source",
    MutationKind.CRITICISM_APPEND: "add a criticism",
    MutationKind.TRACEBACK_APPEND: "add a trace-back note",
    MutationKind.CONTRADICTION_ADDED: "record a contradiction",
    MutationKind.STATEMENT_REWRITE: "rewrite a statement",
    MutationKind.DELETE: "delete an argument",
}


def mutation_kind_words(kind: str) -> str:
    """ "status-downgrade" said as "lower a rating"; an unknown kind as it is."""
    return MUTATION_KIND_WORDS.get(kind, kind)


class ProposedMutation(models.Model):
    kb = models.ForeignKey(KnowledgeBase, related_name="mutations", on_delete=models.CASCADE)
    run = models.ForeignKey("debates.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    turn = models.ForeignKey(
        "debates.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    proposed_by = models.CharField(max_length=100, help_text="Seat handle or user name.")
    kind = models.CharField(max_length=40)  # a MutationKind
    payload = models.JSONField(default=dict)
    justification = models.TextField(blank=True)
    status = models.CharField(max_length=20, choices=MutationStatus.choices, default=MutationStatus.PENDING)
    reason = models.TextField(
        blank=True, help_text="Why it was rejected, or the rule a refused proposal breaks."
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    revision = models.ForeignKey(Revision, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} on {self.kb_id} ({self.status})"

    @property
    def kind_words(self) -> str:
        return mutation_kind_words(self.kind)

    @property
    def proposer(self) -> str:
        """Who proposed it, as pages name them: the proposing turn's seat ("For pricing"), not its handle
        ("debater-pro-pricing"); the recorded name where no turn is linked (a user's own proposal)."""
        seat = getattr(self.turn, "seat", None) if self.turn_id else None
        return str(getattr(seat, "name", "") or self.proposed_by)
