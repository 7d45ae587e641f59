/*
 * fuzz_peer_contact: runtime/peer's contact string parser
 * (px_peer_contact_parse) on any text. An accepted contact must print back
 * (px_peer_contact_format) as exactly the text it came from: one form per
 * contact. A refusal must say something that names what is accepted.
 */
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "runtime/peer/peer_internal.h"
#include "test/fuzz/fuzz.h"

PX_FUZZ_NO_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = px_fuzz_text(data, size);
    if (NULL == text)
        return 0;
    px_peer_contact_t c;
    char why[1024];
    why[0] = '\0';
    int rc = px_peer_contact_parse(text, &c, why, sizeof why);
    if (rc == PX_SUCCESS) {
        char back[PX_PEER_CONTACT_MAX + 1];
        if (px_peer_contact_format(&c, back, sizeof back) != PX_SUCCESS || strcmp(back, text) != 0)
            abort(); /* accepted, but not in its one form */
    } else if (rc != PX_ERR_BAD_PARAM || NULL == strstr(why, "accepted: px-peer:1:")) {
        abort(); /* a refusal that does not say what is accepted */
    }
    free(text);
    return 0;
}
