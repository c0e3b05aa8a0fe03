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

/* The Rust type's full name, its service, and the settings every program
 * of the examples gives it (as examples/common.rs does), so that whichever
 * starts first creates it as the others ask. */
#define TRANSMISSION_TYPE "hako_examples::Transmission"
#define TRANSMISSION_SERVICE "Examples/Transmission"
#define TRANSMISSION_HISTORY 3
#define TRANSMISSION_BUFFER 4

#define DOORBELL_SERVICE "Examples/Doorbell"

/* The client/server examples' types and service, laid out and named as
 * the Rust examples' `AddRequest` and `AddResponse`. */
typedef struct add_request {
    uint64_t a;
    uint64_t b;
} add_request;

typedef struct add_response {
    uint64_t sum;
} add_response;

#define ADD_REQUEST_TYPE "hako_examples::AddRequest"
#define ADD_RESPONSE_TYPE "hako_examples::AddResponse"
#define ADD_SERVICE "Examples/Adder"
#define ADD_IN_FLIGHT 16
#define DOORBELL_EVENT_ID_MAX 7

#endif
