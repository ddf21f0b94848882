"""Turn an admin change page into the POST data its form would submit, so tests can edit one field
and save through the real admin views (inline formsets included)."""


def _put(data: dict, key: str, value) -> None:
    if value is None:
        data[key] = ""
    elif value is False:
        return
    elif value is True:
        data[key] = "on"
    else:
        data[key] = value


def admin_form_data(response) -> dict:
    data = {}
    form = response.context["adminform"].form
    for name in form.fields:
        _put(data, form.add_prefix(name), form[name].value())
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        for name, value in formset.management_form.initial.items():
            data[f"{formset.prefix}-{name}"] = value
        for sub in formset.forms:
            for name in sub.fields:
                _put(data, sub.add_prefix(name), sub[name].value())
    return data
