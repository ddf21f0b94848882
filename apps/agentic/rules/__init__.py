"""Online evaluation rules: traces that finish and match an enabled rule are judged without anyone
asking. The model, EvaluationRule, stays in apps.agentic.models beside the evaluations it asks for."""
