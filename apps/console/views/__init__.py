"""The reviewer console's pages: the dashboard, the run pages (list, launch, run, result drill-down,
comparison, a rubric's judge agreement) and the trace timeline. They sit here, above every domain app,
because they render several apps' data in the console's layout; the domain apps own the reads and
writes (selectors and services) these pages call."""
