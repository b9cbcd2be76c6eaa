"""detect_context without a database: layers from paths, topics, technologies, confidence."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kg.directives.config import parse_directive_config
from kg.directives.detect import detect_context
from kg.errors import ValidationError
from kg.ingest.schema_map import parse_schema_map


def test_files_in_play_name_the_layer_with_their_evidence(tmp_path: Path) -> None:
    found = detect_context(
        tmp_path, task="fix the flaky refunds test", paths=["api/tests/test_refunds.py"]
    )

    assert found.layer == "5-Tests"
    assert found.layer_candidates[0].evidence[0] == "path api/tests/test_refunds.py (tests)"
    assert found.topic_names[0] == "testing"
    assert found.warnings == []


def test_a_top_level_service_folder_is_not_a_layer_but_an_inner_one_is(tmp_path: Path) -> None:
    jobs = detect_context(tmp_path, paths=["api/jobs/reminders.py"])
    service = detect_context(tmp_path, paths=["api/flags.py"])

    assert jobs.layer == "2-Application"
    assert service.layer is None


def test_an_ambiguous_layer_lists_its_candidates_with_a_warning(tmp_path: Path) -> None:
    found = detect_context(tmp_path, paths=["web/components/Button.tsx", "db/queries.sql"])

    assert {c.value for c in found.layer_candidates} == {"1-Presentation", "4-Persistence"}
    assert found.layer_confidence < 0.6
    assert found.warnings[0].startswith("the layer is ambiguous (")


def test_a_diff_names_its_files_and_its_changed_lines_name_topics(tmp_path: Path) -> None:
    diff = (
        "diff --git a/api/auth/login.py b/api/auth/login.py\n--- a/api/auth/login.py\n"
        "+++ b/api/auth/login.py\n+def lock_out(session, password_attempts): ...\n"
    )
    found = detect_context(tmp_path, diff=diff)

    assert found.paths == ["api/auth/login.py"]
    assert "auth" in found.topic_names


def test_manifests_name_languages_and_frameworks(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["fastapi>=0.110"]\n')
    (tmp_path / "web").mkdir()
    (tmp_path / "web/package.json").write_text('{"dependencies": {"react": "18"}}')
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken/Cargo.toml").write_text("[dependencies\n")

    found = detect_context(tmp_path, paths=["web/src/App.tsx", "broken/src/main.rs"])

    assert {f.value for f in found.frameworks} == {"fastapi", "react"}
    assert {f.value for f in found.languages} >= {"python", "javascript", "typescript", "rust"}


def test_a_kept_manifest_is_read_again_when_it_or_its_folder_changes(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\ndependencies = ["fastapi>=0.110"]\n')
    settled = time.time() - 60  # older than SETTLED: what a detection reads is kept
    os.utime(pyproject, (settled, settled))
    os.utime(tmp_path, (settled, settled))
    assert {f.value for f in detect_context(tmp_path).frameworks} == {"fastapi"}

    pyproject.write_text('[project]\ndependencies = ["django>=5"]\n')
    assert {f.value for f in detect_context(tmp_path).frameworks} == {"django"}

    os.utime(pyproject, (settled, settled))
    os.utime(tmp_path, (settled, settled))
    detect_context(tmp_path)
    (tmp_path / "package.json").write_text('{"dependencies": {"react": "18"}}')
    assert {f.value for f in detect_context(tmp_path).frameworks} == {"django", "react"}


def test_a_vague_task_has_a_low_confidence_warning(tmp_path: Path) -> None:
    found = detect_context(tmp_path, task="make it better")

    assert found.confidence < 0.3
    assert found.warnings[0].startswith("LOW CONFIDENCE (")


def test_a_project_adds_path_conventions_and_topics_in_its_schema_map(tmp_path: Path) -> None:
    schema = parse_schema_map(
        "directives:\n  layers: {'src/screens/**': 1-Presentation}\n"
        "  topics: {billing: [dunning]}\n",
        "kg-schema.yaml",
    )

    found = detect_context(
        tmp_path, task="retry dunning", paths=["src/screens/a.py"], config=schema.directives
    )

    assert found.layer == "1-Presentation"
    assert found.path_layers[0]["convention"] == "schema map src/screens/**"
    assert "billing" in found.topic_names


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"layers": {"db/**": "Kitchen"}}, "directives.layers['db/**']: 'Kitchen' is not one of"),
        ({"layers": {"db/{x": "4"}}, "'{' is never closed"),
        ({"topics": {"Bad Topic": ["x"]}}, "a topic is lowercase letters"),
        ({"strength": {"never": ["x"]}}, "directives.strength: expected a mapping with keys"),
        ({"colour": 1}, "unknown key(s) ['colour']"),
    ],
)
def test_a_malformed_directives_config_names_the_file_and_key(
    raw: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError) as error:
        parse_directive_config(raw, "kg-schema.yaml")

    assert str(error.value).startswith("kg-schema.yaml: directives")
    assert message in str(error.value)
