"""The console's "Add to test set": traces chosen on the trace list (several at once), a trace page
or a queue review, and run results (a result page, a run's ticked results), become items of a new
version of one of the project's test sets."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.core.projects.resolution import project_of
from apps.runs import display
from apps.runs.selectors import results_of_project
from apps.runs.services import results_to_test_items
from apps.testsets import services
from apps.testsets.forms import FromSourcesForm, Source
from apps.testsets.schemas import MAX_FROM_TRACES, FromTraceIn
from apps.traces.selectors import project_traces

from ..access import CONFIGURE
from ..context import console_context
from .common import role_required


def _trace_sources(project, wanted: list[str]) -> tuple[list[Source], list[str]]:
    found = {t.session_id: t for t in project_traces(project.pk).filter(session_id__in=wanted)}
    sources = [
        Source(
            key=t.session_id,
            kind="trace",
            url=reverse("console:trace", args=[t.session_id]),
            title=t.session_id,
            detail=f"{t.agent_name} · {t.start_time:%Y-%m-%d %H:%M} · {t.status}",
            question=t.user_query,
            answer=t.final_response,
        )
        for t in (found[s] for s in wanted if s in found)
    ]
    return sources, [s for s in wanted if s not in found]


def _publish_traces(test_set, requests, changelog, author):
    return services.testset_items_from_traces(
        test_set=test_set,
        requests=[FromTraceIn(session_id=k, expected_outcome=o, success_criteria=c) for k, o, c in requests],
        changelog=changelog,
        author=author,
    )


def _result_sources(project, wanted: list[str]) -> tuple[list[Source], list[str]]:
    found = results_of_project(project=project, result_ids=wanted)
    sources = []
    for key in wanted:
        result = found.get(key)
        if result is None:
            continue
        item = display.result_item_view(result=result)
        users = display.user_turns(result.output)
        sources.append(
            Source(
                key=key,
                kind="run result",
                url=reverse("console:result-detail", args=[result.result_id]),
                title=result.item_name or key,
                detail=f"run {result.run.label or str(result.run.run_id)[:8]} · attempt {result.attempt} · "
                f"{result.outcome or result.state}",
                question=item.get("message") or (users[0] if users else ""),
                answer=display.final_answer(result.output),
                expected_outcome=item["expected"].get("expected_outcome", ""),
                success_criteria=list(item["expected"].get("success_criteria", [])),
            )
        )
    return sources, [s for s in wanted if s not in found]


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
@role_required(CONFIGURE)
def items_from_sources(request):
    """GET ?session_id=…&session_id=… (or ?result_id=…) shows the chosen traces (or results) with
    a field each for what the agent should have done; POST publishes them as the next version of the
    chosen test set and goes to it."""
    project = project_of(request)
    source = request.POST if request.method == "POST" else request.GET
    by_result = bool(source.getlist("result_id"))
    wanted = list(dict.fromkeys(s for s in source.getlist("result_id" if by_result else "session_id") if s.strip()))
    wanted = wanted[:MAX_FROM_TRACES]
    sources, missing = (_result_sources if by_result else _trace_sources)(project, wanted)
    form = FromSourcesForm(
        request.POST if request.method == "POST" else None,
        project=project,
        sources=sources,
        initial_test_set=request.GET.get("test_set"),
    )
    if request.method == "POST" and sources and not missing:
        if by_result:
            results = results_of_project(project=project, result_ids=wanted)

            def publish(test_set, requests, changelog, author):
                return results_to_test_items(
                    test_set=test_set,
                    requests=[(results[k], o, c) for k, o, c in requests],
                    changelog=changelog,
                    author=author,
                )
        else:
            publish = _publish_traces
        test_set = form.publish(publish, author=request.user.get_username())
        if test_set is not None:
            n = len(sources)
            messages.success(
                request,
                f"Published version {test_set.current_version} of {test_set.name} with {n} item{'' if n == 1 else 's'} "
                f"from {'run results' if by_result else 'traces'}.",
            )
            return redirect(reverse("admin:testsets_testset_change", args=[test_set.pk]))
    return render(
        request,
        "console/testset_from_traces.html",
        console_context(
            request,
            title="Add to a test set",
            form=form,
            by_result=by_result,
            what="run result" if by_result else "trace",
            field="result_id" if by_result else "session_id",
            missing=missing,
            no_test_sets=not form.fields["test_set"].queryset.exists(),
        ),
    )
