definition.setArrivalPhases([{ duration: 10, rate: 20, max_clients: 500 }]);
definition.setTestOptions({ cluster: { sizing: "preflight" } });
