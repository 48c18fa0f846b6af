-- wrk: a small, realistic chat completion request.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"bench-model","messages":[{"role":"system","content":"You are a helpful assistant."},' ..
           '{"role":"user","content":"Write one sentence about load balancers."}],"max_tokens":32,"user":"bench"}'
