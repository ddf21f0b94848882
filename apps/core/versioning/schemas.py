"""What an edit of a versioned head sends besides the head's content: the changelog of the version
it publishes and, for an update, the version it is based on. `input_schemas` makes an app's two
input schemas from its content schema, e.g. `RubricCreateIn, RubricUpdateIn = input_schemas(RubricContent)`."""

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, Field

from apps.core.api.validation import ConfigurationIn, Text


def _none_to_blank(value):
    return "" if value is None else value


Changelog = Annotated[Text, BeforeValidator(_none_to_blank), Field(max_length=5000)]


class CreateFields(BaseModel):
    changelog: Changelog = ""


class UpdateFields(BaseModel):
    version: int | None = Field(
        default=None,
        description="The version this edit is based on; a stale one is 409. "
        "The If-Match header (ETag of GET) does the same.",
    )
    changelog: Changelog = ""


def input_schemas(content: type[ConfigurationIn]) -> tuple[type[ConfigurationIn], type[ConfigurationIn]]:
    """The create and update bodies of a head whose content schema is `content` (named <Head>Content):
    <Head>CreateIn, where a `version` sent back from a GET is ignored like the content's other
    read-only fields, and <Head>UpdateIn, where it names the version the edit is based on."""
    head = content.__name__.removesuffix("Content")

    def schema(name: str, fields: type[BaseModel], **namespace) -> type[ConfigurationIn]:
        return type(name, (fields, content), {"__module__": content.__module__, "__qualname__": name, **namespace})

    return (
        schema(f"{head}CreateIn", CreateFields, read_only=content.read_only | {"version"}),
        schema(f"{head}UpdateIn", UpdateFields),
    )
