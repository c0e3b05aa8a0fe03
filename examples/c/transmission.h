/* The payload of the publisher/subscriber examples, laid out as the Rust
 * examples' `hako_examples::Transmission` (examples/common.rs), so C, C++
 * and Rust programs share the service. */
#ifndef TRANSMISSION_H
#define TRANSMISSION_H

#include <stdint.h>

typedef struct transmission {
    uint64_t seq;
    double temperature;
    uint8_t note[32];
} transmission;

/* The Rust type's full name, its service, and the settings both sides use. */
#define TRANSMISSION_TYPE "hako_examples::Transmission"
#define TRANSMISSION_SERVICE "Examples/Transmission"
#define TRANSMISSION_HISTORY 3

#define DOORBELL_SERVICE "Examples/Doorbell"
#define DOORBELL_EVENT_ID_MAX 7

#endif
