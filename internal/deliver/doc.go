// Package deliver holds the handlers that deliver due jobs by a way other
// than a webhook (see timer.Way): its subpackages nats and amqp each
// publish a job to a message bus as a timer.Handler, carrying the body and
// the signed headers of the webhook the job would have had, so a consumer
// verifies and de-duplicates it as a webhook receiver does.
package deliver
