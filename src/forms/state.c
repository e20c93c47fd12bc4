/* forms/state: see state.h. The table is written out as a switch per
 * current state, so a reader can check each row against the spec's table. */
#include "forms/state.h"

#include <string.h>

static forms_decision_t from_none(forms_action_t action, forms_status_t *next)
{
    if (action != FORMS_GENERATE)
        return FORMS_REFUSED_MISSING;
    *next = FORMS_GENERATED;
    return FORMS_CREATE;
}

static forms_decision_t from_generated(forms_action_t action, forms_status_t *next)
{
    switch (action) {
    case FORMS_GENERATE:
        return FORMS_REFRESH; /* *next stays Generated */
    case FORMS_FILE:
        *next = FORMS_FILED;
        return FORMS_MOVE;
    case FORMS_DELETE:
        *next = FORMS_DELETED;
        return FORMS_MOVE;
    }
    return FORMS_REFUSED_MISSING; /* not reached: every action is handled */
}

forms_decision_t forms_decide(forms_status_t current, forms_action_t action,
                              forms_status_t *next)
{
    *next = current;
    switch (current) {
    case FORMS_NONE:
        return from_none(action, next);
    case FORMS_GENERATED:
        return from_generated(action, next);
    case FORMS_FILED:
        return FORMS_REFUSED_FILED;
    case FORMS_DELETED:
        /* A deleted form is not the live one: generating starts afresh. */
        if (action == FORMS_GENERATE)
            return from_none(action, next);
        return FORMS_REFUSED_DELETED;
    }
    return FORMS_REFUSED_MISSING;
}

bool forms_refused(forms_decision_t decision)
{
    return decision == FORMS_REFUSED_FILED || decision == FORMS_REFUSED_DELETED ||
           decision == FORMS_REFUSED_MISSING;
}

static const char *const NAMES[] = {NULL, "Generated", "Filed", "Deleted"};

const char *forms_status_name(forms_status_t status)
{
    if ((unsigned)status >= sizeof NAMES / sizeof NAMES[0])
        return NULL;
    return NAMES[status];
}

bool forms_status_parse(const char *name, forms_status_t *out)
{
    for (forms_status_t s = FORMS_GENERATED; s <= FORMS_DELETED; s++)
        if (strcmp(NAMES[s], name) == 0) {
            *out = s;
            return true;
        }
    return false;
}

const char *forms_refusal_reason(forms_decision_t decision, forms_action_t action)
{
    switch (decision) {
    case FORMS_REFUSED_FILED:
        if (action == FORMS_GENERATE)
            return "the form is Filed: a filed form is never regenerated";
        if (action == FORMS_DELETE)
            return "the form is Filed: a filed form cannot be deleted";
        return "the form is already Filed (Filed is final)";
    case FORMS_REFUSED_DELETED:
        return "the form is Deleted (Deleted is final)";
    case FORMS_REFUSED_MISSING:
        return "no such form";
    default:
        return "";
    }
}
