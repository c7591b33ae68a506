"""KB pages: the browser, filters, graph data, upload with its error report, and the approval inbox."""

from __future__ import annotations

import io
import json
import zipfile

from kb.discipline import mutation_propose
from kb.models import KnowledgeBase
from tests.platform.test_rendering import executable_parts


def _zip(files: dict[str, str]) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    buffer.seek(0)
    buffer.name = "upload.zip"
    return buffer


class BrowserTests:
    def test_the_detail_page_shows_arguments_with_status_badges(self, viewer_client, small_kb):
        html = viewer_client.get(f"/kb/{small_kb.slug}/").content.decode()
        assert html.count('data-arg="arg-') == 6
        assert 'class="badge status-baseless" data-status="baseless"' in html
        assert 'id="kb-graph-data"' in html and 'id="kb-graph"' in html

    def test_arguments_filter_by_status_position_and_layer(self, viewer_client, small_kb):
        partial = viewer_client.get(
            f"/kb/{small_kb.slug}/", {"status": "weak"}, HTTP_HX_REQUEST="true"
        ).content.decode()
        assert partial.lstrip().startswith('<table id="arguments-table"')
        assert 'data-arg="arg-004"' in partial and partial.count('data-arg="') == 1
        partial = viewer_client.get(
            f"/kb/{small_kb.slug}/", {"position": "con-x"}, HTTP_HX_REQUEST="true"
        ).content.decode()
        assert partial.count('data-arg="') == 3

    def test_the_graph_marks_engagement_edges(self, viewer_client, small_kb):
        graph = viewer_client.get(f"/kb/{small_kb.slug}/graph.json").json()
        assert len(graph["nodes"]) == 6
        assert {(e["data"]["type"], e["data"]["engagement"]) for e in graph["edges"]} == {
            ("supports", False),
            ("addresses", True),
        }

    def test_kb_text_is_rendered_safely(self, viewer_client, small_kb):
        small_kb.arguments.filter(arg_id="arg-001").update(
            summary='<img src=x onerror="alert(1)"> [x](javascript:alert(1))'
        )
        html = viewer_client.get(f"/kb/{small_kb.slug}/").content.decode()
        assert executable_parts(html, page=True) == []
        assert "\\u003Cimg" in html  # inside the graph's JSON data block, escaped


class UploadTests:
    def test_a_broken_upload_is_reported_by_file_and_line_and_imports_nothing(self, moderator_client):
        upload = _zip(
            {
                "kb/arguments/arg-001-x.md": "---\nid: arg-001\n---\n",
                "kb/edges.md": 'arg-001  endorses  arg-002  ""\n',
            }
        )
        response = moderator_client.post("/kb/", {"file": upload})
        html = response.content.decode()
        assert response.status_code == 400
        assert "kb/arguments/arg-001-x.md:1</code> missing frontmatter field &#x27;layer&#x27;" in html
        assert "kb/edges.md:1</code> unknown edge type &#x27;endorses&#x27;" in html
        assert "kb/quality-summary.md:1</code> missing quality summary" in html
        assert not KnowledgeBase.objects.exists()

    def test_a_json_data_kb_uploads_and_shows_its_paths(self, moderator_client):
        data = {
            "meta": {"generated_at": "2026-11-20"},
            "macro": {"CPI": {"latest_value": 3.1, "trend": "falling"}},
        }
        upload = io.BytesIO(json.dumps(data).encode())
        upload.name = "market.json"
        response = moderator_client.post("/kb/", {"file": upload})
        kb = KnowledgeBase.objects.get()
        assert response.status_code == 302 and kb.kind == "data"
        html = moderator_client.get(f"/kb/{kb.slug}/", {"path": "macro"}).content.decode()
        assert "<code>macro.CPI.latest_value</code>" in html and "generated_at" not in html

    def test_a_viewer_cannot_upload(self, viewer_client):
        assert viewer_client.post("/kb/", {"file": _zip({"x": "y"})}).status_code == 403


class InboxTests:
    def test_a_moderator_approves_one_and_rejects_one(self, moderator_client, small_kb):
        first = mutation_propose(
            kb=small_kb,
            kind="status-downgrade",
            payload={"arg_id": "arg-002", "to": "contested"},
            proposed_by="debater-con-x",
        )
        second = mutation_propose(
            kb=small_kb,
            kind="status-downgrade",
            payload={"arg_id": "arg-003", "to": "weak"},
            proposed_by="debater-pro-x",
        )
        html = moderator_client.get("/kb/inbox/").content.decode()
        assert f'id="mutation-{first.pk}"' in html and f'id="mutation-{second.pk}"' in html
        # The kind in words, not its key (which stays in data-kind).
        assert '<strong data-kind="status-downgrade">Lower a rating</strong>' in html
        assert ">status-downgrade<" not in html

        approved = moderator_client.post(
            f"/kb/inbox/{first.pk}/decide/", {"decision": "approve"}, HTTP_HX_REQUEST="true"
        ).content.decode()
        assert 'data-status="applied"' in approved and "R-001" in approved
        rejected = moderator_client.post(
            f"/kb/inbox/{second.pk}/decide/",
            {"decision": "reject", "reason": "the attack is not decisive"},
            HTTP_HX_REQUEST="true",
        ).content.decode()
        assert 'data-status="rejected"' in rejected and "the attack is not decisive" in rejected
        statuses = dict(small_kb.arguments.values_list("arg_id", "status"))
        assert (statuses["arg-002"], statuses["arg-003"]) == ("contested", "contested")
        assert list(small_kb.revisions.values_list("r_id", flat=True)) == ["R-001"]
        # The KB page's revisions log names the type in words too; the type itself stays in data-type.
        kb_page = moderator_client.get(f"/kb/{small_kb.slug}/").content.decode()
        assert '<td data-type="status-downgrade">Lower a rating</td>' in kb_page

    def test_a_viewer_cannot_decide(self, viewer_client, small_kb):
        mutation = mutation_propose(
            kb=small_kb, kind="status-downgrade", payload={"arg_id": "arg-002", "to": "weak"}, proposed_by="x"
        )
        assert (
            viewer_client.post(f"/kb/inbox/{mutation.pk}/decide/", {"decision": "approve"}).status_code == 403
        )
        mutation.refresh_from_db()
        assert mutation.status == "pending"
